"""One table of a ``build.toml`` as code: keys declared as dataclass fields (:mod:`.keys`), typed
reads with one-line errors (:mod:`.reader`), and the ``[kernel.*]`` section every backend takes
(:mod:`.kernel`). Below both :mod:`pybuild.backends` (each backend's section type builds on it) and
:mod:`pybuild.manifest` (which reads whole manifests with it)."""
