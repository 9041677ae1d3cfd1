"""The file vLLM's ``--tool-parser-plugin`` / ``--reasoning-parser-plugin`` import (by module name
``respc.vllm_plugin`` or by this file's path): registers ``respc-<name>`` parsers (see respc.vllm).

``RESPC_VLLM_TEMPLATES`` (comma-separated catalogue names) limits what is registered; unset, every
catalogue template is. ``python -m respc.vllm_plugin`` prints this file's path.
"""

from __future__ import annotations

import os

from respc import vllm as _vllm

_names = [n.strip() for n in os.environ.get("RESPC_VLLM_TEMPLATES", "").split(",") if n.strip()]
REGISTERED = _vllm.register(*_names)

if __name__ == "__main__":
    print(os.path.abspath(__file__))
