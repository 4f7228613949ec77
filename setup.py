"""The compiled parts of mrsched: optional, so that an install without a C compiler still
works (``schedulers/profile/ordered_queue.py`` then uses its pure-Python tree, ``schedulers/profile/placement.py``
its pure-Python count of burst-buffer shares, ``schedulers/profile/availability.py`` its pure-Python
row and node-mask operations, ``simulator/kernel.py`` its Python step loop). Everything else is
in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("mrsched.schedulers.profile._mintree", ["schedulers/profile/_mintree.c"], optional=True,
              depends=["schedulers/profile/_mintree_room.h"], extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers.profile._shares", ["schedulers/profile/_shares.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers.profile._profile", ["schedulers/profile/_profile.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.simulator._steps", ["simulator/_steps.c", "simulator/_idle.c"], optional=True,
              extra_compile_args=["-O2"]),
])
