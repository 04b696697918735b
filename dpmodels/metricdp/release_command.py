"""``dpmodels release mdp`` run through the shared release runner (its arguments: :mod:`.commands`).

The public domain (a ``--points`` file or a generated grid at ``--epsilon`` per km and ``--eta``)
and the fallback location of records outside it are read before the records; the release itself
is :func:`dpmodels.metricdp.release.release` through :func:`dpmodels.core.release.run_release`, in a
session whose budget is epsilon per km.
"""

from __future__ import annotations

from pathlib import Path

from dpmodels.core.errors import DataValidationError
from dpmodels.core.settings import parse_settings

__all__ = ["run_release_command"]


def run_release_command(args, default_instance: str, default_settings: dict) -> int:
    """Run ``release mdp`` on parsed ``args``; the built-in domain is ``default_instance`` shaped by
    ``default_settings`` (declared in :mod:`.commands`, passed here so this module imports nothing of it).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    default_instance : str
        The instance generated when neither ``--instance`` nor ``--points`` is given.
    default_settings : dict
        Its generator settings (``--set`` overrides them).
    """
    import pandas as pd

    from dpmodels.core.release import ReleaseOutcome, ReleaseSpec, run_release
    from dpmodels.instances.metricdp import records_from_csv

    from .mechanism import NOISE
    from .release import release, release_facts

    epsilon = _per_km(args.epsilon)

    def load():
        instance = _release_domain(args, epsilon, default_instance, default_settings)
        fallback = _fallback(instance, args.outside)  # a public declaration, checked before the records are read
        labels = instance.info.get("labels") or [str(i) for i in range(instance.N)]
        users, records = records_from_csv(args.records, labels, cells="labels" not in instance.info)
        return {"instance": instance, "fallback": fallback, "labels": labels, "users": users, "records": records}

    def mechanism(data, amount, rng):
        result = release(
            data["instance"],
            data["records"],
            rng,
            not_private=args.not_private,
            outside=data["fallback"],
            users=data["users"],
            solver=args.solver,
            gap=args.gap,
            time_limit=args.time_limit,
            name=Path(args.records).name,
        )
        return result, result.ledger

    def run(session, data, amount) -> ReleaseOutcome:
        result = session.run("metric-DP perturbation of every record", mechanism, amount)
        instance, labels = data["instance"], data["labels"]
        frame = pd.DataFrame({"user": data["users"], "released": [labels[i] for i in result.released]})
        mech = result.mechanism
        gap = "not certified" if mech.gap is None else f"certified gap {mech.gap:.2g}"
        summary = [
            f"domain {instance.name}: {instance.N} locations, {instance.K} outputs, eps = {instance.epsilon:g}/km, "
            f"eta = {instance.eta:g} km; mechanism by {mech.solver} ({mech.status}): expected loss {mech.loss:.6g} "
            f"({gap}), exactly mDP: {result.audit['exactly mDP']}",
            f"a record outside the domain is perturbed as if it were at {labels[data['fallback']]!r} (the stated rule)",
        ]
        facts = release_facts(instance, outside=data["fallback"], solver=args.solver, gap=args.gap)
        ledger = result.to_dict() | {"budget": session.to_dict()}
        details = {"optimisation": mech.as_dict(), "audit": result.audit}
        return ReleaseOutcome({"--out": frame}, facts, summary, ledger=ledger, details=details, sampler=NOISE)

    spec = ReleaseSpec(
        "mdp",
        inputs={"--records": args.records, "--points": args.points},
        outputs={"--out": args.out},
        load=load,
        run=run,
        unit="epsilon_per_km",
        name=Path(args.records).stem,
    )
    return run_release(args, spec)


def _fallback(instance, label) -> int:
    """``--outside``: the declared fallback location's index (default: the domain's centre)."""
    from .release import fallback_location

    try:
        return fallback_location(instance, label)
    except DataValidationError as err:
        raise DataValidationError("--outside", err.problem) from None


def _per_km(text) -> float:
    """``--epsilon`` (privacy per km) read exactly (:func:`~dpmodels.core.noise.as_epsilon`), as a float."""
    from dpmodels.core.noise import as_epsilon

    return float(as_epsilon(text, "--epsilon"))


def _release_domain(args, epsilon: float, default_instance: str, default_settings: dict):
    """The public metric: a points file, or a generated (or built-in) instance at ``epsilon`` and ``--eta``."""
    import dpmodels.instances as instances
    from dpmodels.instances.metricdp import locations_from_csv

    from .data import MAX_EXPONENT, MDPInstance

    if epsilon * args.eta > MAX_EXPONENT:  # before a generator exponentiates it
        raise DataValidationError(
            "--epsilon",
            f"epsilon * eta = {epsilon * args.eta:g}: exp(eps d) overflows double precision (limit {MAX_EXPONENT:g})",
        )
    if args.points:
        if args.set:
            raise DataValidationError("--set", "shapes a generated --instance, not --points")
        return locations_from_csv(args.points, epsilon, args.eta)
    name = args.instance or default_instance
    settings = parse_settings(args.set)
    for key, flag in (("epsilon", "--epsilon"), ("eta", "--eta")):
        if key in settings:
            raise DataValidationError("--set", f"{key} is given by {flag}")
    defaults = default_settings if name == default_instance else None
    generated = instances.is_generator(name)
    privacy = {"epsilon": epsilon, "eta": args.eta} if generated else {}
    data = instances.from_settings(name, settings, defaults, **privacy)
    if not generated and isinstance(data, MDPInstance):
        data = data.with_privacy(epsilon, args.eta)
    if not isinstance(data, MDPInstance):
        raise DataValidationError("--instance", f"{name!r} is not a metric-DP instance")
    return data
