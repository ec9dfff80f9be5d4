"""A host worker process: ``python worker.py READ_FD WRITE_FD``.

It reads ``(env_id, kwargs)``, then ``(command, group, array)`` messages, and answers each
with ``("ok", result)`` or ``("error", message)``, until ``None`` or the end of its input.
Run as a script it imports only NumPy, gymnasium and its sibling :mod:`envs` (not the
evolax package, and so not JAX): a worker starts in a fraction of a second.
"""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection
from typing import Any

if __name__ == "__main__":  # a script: the sibling module, without the package
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from envs import EnvGroups, GymnasiumSpec  # type: ignore[import-not-found]
else:
    from evolax.host.envs import EnvGroups, GymnasiumSpec


def serve(receive: Any, send: Any, spec: Any) -> None:
    """Answer commands on ``spec``'s environments until told to stop."""
    envs = EnvGroups(spec)
    try:
        while (message := receive.recv()) is not None:
            command, group, payload = message
            try:
                result = (envs.reset if command == "reset" else envs.step)(group, payload)
                send.send(("ok", result))
            except Exception as error:  # reported to the run, which stops with it
                send.send(("error", str(error)))
    except (EOFError, KeyboardInterrupt):  # the run ended (or was interrupted) first
        pass
    finally:
        envs.close()


def main(read_fd: int, write_fd: int) -> None:
    receive, send = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    os.dup2(2, 1)  # an environment's prints go to stderr, never into the messages
    env_id, kwargs = receive.recv()
    serve(receive, send, GymnasiumSpec(env_id, tuple(kwargs)))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
