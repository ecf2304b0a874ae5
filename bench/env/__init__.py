"""The machine and process a run happens in: device placement, the hardware fingerprint, loaded plugins."""

import typing

if not typing.TYPE_CHECKING:  # at run time `bench.env.<module>` loads on first use (the docs' paths)
    from bench.api.lazy import submodules

    __getattr__ = submodules(__name__)
