"""The compiled parts of mrsched: optional, so that an install without a C compiler still
works (``schedulers/ordered_queue.py`` then uses its pure-Python tree, ``schedulers/placement.py``
its pure-Python count of burst-buffer shares, ``schedulers/availability.py`` its pure-Python
row and node-mask operations, ``simulator/kernel.py`` its Python step loop). Everything else is
in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("mrsched.schedulers._mintree", ["schedulers/_mintree.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers._shares", ["schedulers/_shares.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.schedulers._profile", ["schedulers/_profile.c"], optional=True,
              extra_compile_args=["-O2"]),
    Extension("mrsched.simulator._steps", ["simulator/_steps.c", "simulator/_idle.c"], optional=True,
              extra_compile_args=["-O2"]),
])
