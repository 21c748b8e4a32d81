"""What the farm's tests share, in one place (the loopback Hub is its own package, ``tests/hubfixture``).

- ``fixtures``: pytest fixtures every test module can take by name (``tests/conftest.py`` registers them):
  ``repo_root``, ``guide_kernel``, ``kernel`` (a tiny kernel with one built CPU variant), ``variants_file``
  (a matrix of just that variant), ``hub`` (the loopback Hub), ``hub_in_process`` and ``api``.
- ``fakebuild``: kernel folders with hand-made ``build/<variant>/`` trees (no CMake, no torch compile).
- ``procs``: run a command, ``python -m pybuild`` or a Python snippet in a fresh interpreter.
- ``loader``: the real ``kernels`` loader, or a skip.
- ``corpus``: deep and odd file trees, and snapshots of a tree, for the fault tests.
"""
