"""The compiled part of mrsched: optional, so that an install without a C compiler still
works (``schedulers/ordered_queue.py`` then uses its pure-Python tree). Everything else is
in pyproject.toml."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("mrsched.schedulers._mintree", ["schedulers/_mintree.c"], optional=True,
                             extra_compile_args=["-O2"])])
