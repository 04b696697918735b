"""Every family's result has one ``to_frame()`` with a labelled index (issue 24).

Oracle: the result's own arrays, read back through the labels of the frame.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from dpmodels import instances
from dpmodels.core.session import PrivacySession
from dpmodels.facility.release import release as facility_release
from dpmodels.instances.topdown import synthetic_census
from dpmodels.metricdp.release import release as mdp_release
from dpmodels.pgsr import NoisyGroupSizes, postprocess
from dpmodels.topdown.driver import run_topdown


def test_pgsr_release_frame_is_indexed_by_region():
    data = instances.load("pgsr/running-example")
    noisy = NoisyGroupSizes(data.hierarchy, data.counts + 0.4, data.G, level_scales=(Fraction(2),) * 2)
    frame = postprocess("M_H^dp", noisy).to_frame()
    assert frame.index.name == "region" and list(frame.index) == list(data.hierarchy.names)
    assert frame.loc["US", list(range(1, data.N + 1))].sum() == data.G


def test_topdown_frame_is_indexed_by_region_and_attributes():
    census = synthetic_census(seed=1, preset="tiny", races=7)
    result = run_topdown(census, 1, seed=2)[0]
    frame = result.to_frame(census.schema)
    assert list(frame.index.names) == ["region", *census.schema.names]
    per_region = frame.groupby(level="region")["count"].sum()
    totals = np.asarray(result.node_counts.sum(axis=1)).ravel()
    assert per_region.reindex(list(result.geography.names), fill_value=0).tolist() == totals.tolist()  # empty: absent


def test_facility_frame_is_indexed_by_tree_node():
    data = instances.load("facility/example-a")
    published = facility_release(PrivacySession(data, epsilon=1, seed=1, not_private=True), 1)
    frame = published.to_frame()
    assert frame.index.name == "node" and list(frame.index) == list(published.R)
    assert frame["location"].tolist() == list(published.facilities)


def test_metricdp_frame_is_indexed_by_user():
    inst = instances.generate("mdp/grid", seed=0, rows=3, cols=3, K=9, epsilon=1.0, eta=2.0)
    out = mdp_release(inst, np.array([0, 4, 8]), np.random.default_rng(1), not_private=True)
    frame = out.to_frame(["ann", "ben", "cat"])
    assert frame.index.name == "user" and list(frame.index) == ["ann", "ben", "cat"]
    assert len(frame) == 3 and out.to_frame().index.name == "record"
