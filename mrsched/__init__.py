"""mrsched: multi-resource HPC job schedulers speaking the Batsim v4 protocol.

The top-level folders of the repository install as subpackages of this namespace
(``mrsched.schedulers``, ``mrsched.simulator``, ...); see docs/ARCHITECTURE in shared/.
"""

__version__ = "0.1.0"
