"""The compiled parts of mrsched: optional, so that an install without a C compiler still
works (``schedulers/profile/ordered_queue.py`` then uses its pure-Python tree, ``schedulers/profile/placement.py``
its pure-Python count of burst-buffer shares, ``schedulers/profile/availability.py`` its pure-Python
row and node-mask operations, ``simulator/kernel.py`` its Python step loop). Everything else is
in pyproject.toml.

An editable install (``pip install -e .``) also byte-compiles the sources in place, as pip
does for a regular install: where ``PYTHONDONTWRITEBYTECODE`` is set, each ``mrsched`` command
would otherwise compile every module it imports again (issue 45)."""

import compileall
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    """``build_ext``, and for an in-place (editable) build the package's bytecode too."""

    def run(self):
        super().run()
        if self.inplace:
            root = Path(__file__).resolve().parent
            for folder in sorted(set((self.distribution.package_dir or {}).values())):
                compileall.compile_dir(str(root / folder), quiet=1)


setup(cmdclass={"build_ext": BuildExt}, ext_modules=[
    Extension("mrsched.schedulers.profile._mintree", ["schedulers/profile/_mintree.c"], optional=True,
              depends=["schedulers/profile/_mintree_room.h"], extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers.profile._shares", ["schedulers/profile/_shares.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers.profile._profile", ["schedulers/profile/_profile.c"], optional=True,
              extra_compile_args=["-O2"]),
    # no fused multiply-add: the solver's floats must be its Python twins' (_maxmin.c)
    Extension("mrsched.simulator._steps", ["simulator/_steps.c", "simulator/_idle.c", "simulator/_maxmin.c"],
              optional=True, depends=["simulator/_timer.h"], extra_compile_args=["-O2", "-ffp-contract=off"]),
])
