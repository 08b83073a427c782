"""Driving the torch engine from Python (docs/engine-protocol.md): the trainer's side, minimal.

The llmcp trainer (TypeScript) is the engine's real client. This one exists
so that the engine can be tested and measured where Node is absent (a GPU
machine with only Python): it starts the local ranks with the same
variables, sends the same frames and reads the same answers.

    with LocalEngine(world_size=2) as engine:
        engine.init(decoder, optimizer, parameters)      # parameters: a flat list or array of f64
        loss, norm, clipped = engine.step(inputs, targets, rows, columns, learning_rate)
        state = engine.state()
"""
import os
import socket
import struct
import subprocess
import sys

from . import wire


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class EngineError(Exception):
    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code


class LocalEngine:
    """Ranks 0 … world_size − 1 of the engine on this machine, as the trainer starts them."""

    def __init__(self, world_size=1, device="cpu", threads=1, python=None, env=None):
        self.world_size = world_size
        self.ranks = []
        self._channels = []
        port = free_port()
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        for rank in range(world_size):
            ours, theirs = socket.socketpair()
            child_env = dict(os.environ)
            child_env.update(env or {})
            child_env.update(
                RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size), LOCAL_WORLD_SIZE=str(world_size),
                MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LLMCP_ENGINE_CHANNEL=str(theirs.fileno()),
                LLMCP_ENGINE_DEVICE=device, LLMCP_ENGINE_THREADS=str(threads),
                PYTHONPATH=os.pathsep.join(p for p in (package, child_env.get("PYTHONPATH")) if p),
            )
            process = subprocess.Popen(
                [python or sys.executable, "-m", "llmcp.engine"], stdin=subprocess.PIPE, pass_fds=(theirs.fileno(),), env=child_env, start_new_session=True,
            )
            theirs.close()
            self.ranks.append(process)
            self._channels.append((ours, ours.makefile("rb")))
        self._writer = wire.FrameWriter(self.ranks[0].stdin)

    def _answer(self, expect):
        while True:
            header, payload = wire.read_frame(self._channels[0][1], 1 << 40)
            kind = header["kind"]
            if kind == "heartbeat":
                continue
            if kind in ("error", "fatal"):
                raise EngineError(header.get("code"), header.get("message"))
            if kind != expect:
                raise EngineError("ENGINE_PROTOCOL", "%s answered where %s was due" % (kind, expect))
            return header, payload

    def init(self, decoder, optimizer, parameters, moments=None, step=0, powers=(1.0, 1.0), dtype="f64", protocol=wire.PROTOCOL):
        values = list(parameters) + (list(moments[0]) + list(moments[1]) if moments is not None else [])
        header = {
            "kind": "init", "protocol": protocol, "decoder": decoder, "optimizer": optimizer, "step": step,
            "beta1Power": powers[0], "beta2Power": powers[1], "hasMoments": moments is not None, "dtype": dtype, "deterministic": True,
        }
        self._writer.write(header, struct.pack("<%dd" % len(values), *values))
        return self._answer("ready")[0]

    @staticmethod
    def _ids(inputs, targets):
        ids = list(inputs) + list(targets)
        return struct.pack("<%di" % len(ids), *ids)

    def step(self, inputs, targets, rows, columns, learning_rate):
        self._writer.write({"kind": "step", "learningRate": learning_rate, "rows": rows, "columns": columns}, self._ids(inputs, targets))
        h = self._answer("stepped")[0]
        return h["loss"], h["gradientNorm"], h["clipped"]

    def evaluate(self, inputs, targets, rows, columns):
        self._writer.write({"kind": "evaluate", "rows": rows, "columns": columns}, self._ids(inputs, targets))
        return self._answer("evaluated")[0]["loss"]

    def state(self):
        """(step, (beta1 power, beta2 power), parameters, first moments or None, second moments or None) as f64 tuples."""
        self._writer.write({"kind": "state"})
        h, payload = self._answer("state")
        values = struct.unpack("<%dd" % (len(payload) // 8), payload)
        n = len(values) // (3 if h["hasMoments"] else 1)
        first = values[n : 2 * n] if h["hasMoments"] else None
        second = values[2 * n :] if h["hasMoments"] else None
        return h["step"], (h["beta1Power"], h["beta2Power"]), values[:n], first, second

    def close(self):
        try:
            self._writer.write({"kind": "stop"})
            self._answer("stopped")
        except (OSError, EngineError, wire.WireError):
            pass
        codes = []
        for process in self.ranks:
            try:
                codes.append(process.wait(timeout=30))
            except subprocess.TimeoutExpired:
                process.kill()
                codes.append(process.wait())
        for sock, channel in self._channels:
            channel.close()
            sock.close()
        for process in self.ranks:
            process.stdin.close()
        return codes

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
