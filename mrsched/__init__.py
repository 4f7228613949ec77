"""mrsched: multi-resource HPC job schedulers speaking the Batsim v4 protocol.

The top-level folders of the repository install as subpackages of this namespace
(``mrsched.schedulers``, ``mrsched.simulator``, ...); see docs/ARCHITECTURE in shared/.

The library (docs/API.md): ``simulate(platform, workload, policy)`` runs one simulation in
this process and returns a ``Result`` (jobs, machine states, metrics, manifest); ``Policy``
and ``Param`` write a policy (docs/WRITING_A_POLICY.md); ``make_policy`` and
``policy_names`` reach the registry; ``Stepper`` stops the engine at every scheduling
point (``mrsched.stepping``; ``mrsched.gym`` builds a Gymnasium environment on it). Each
name is imported when first used, so that ``import mrsched`` (and the ``mrsched`` command)
stays light.
"""

__version__ = "0.1.0"

#: public name -> the module defining it (imported on first use)
_EXPORTS = {
    "simulate": "mrsched.api",
    "Result": "mrsched.api",
    "Stepper": "mrsched.stepping",
    "Policy": "mrsched.schedulers.model.contract",
    "Param": "mrsched.schedulers.model.params",
    "make_policy": "mrsched.schedulers.registry",
    "policy_names": "mrsched.schedulers.registry",
    "MrschedError": "mrsched.errors",
    "ConfigError": "mrsched.errors",
    "PlatformError": "mrsched.errors",
    "WorkloadError": "mrsched.errors",
    "SimulationError": "mrsched.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mrsched' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
