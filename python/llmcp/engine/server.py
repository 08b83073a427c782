"""The command loop of a rank (docs/engine-protocol.md §3): init, step, evaluate, state, stop."""
import ctypes
import datetime
import math
import os

import torch
import torch.distributed as dist

from . import wire
from .model import Decoder, parameter_shapes
from .optim import AdamW, NonFiniteError, clip_multiplier

DTYPES = {"f64": torch.float64, "f32": torch.float32}


class EngineFailure(Exception):
    """A failure the trainer reports with its code (ENGINE_*)."""

    def __init__(self, code, message, detail=""):
        super().__init__(message)
        self.code = code
        self.detail = detail


class CommandError(Exception):
    """A command that cannot be carried out; the rank stays usable and rank 0 answers `error`."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _blas_libraries():
    try:
        with open("/proc/self/maps") as f:
            return sorted({line.split()[-1] for line in f if ("blas" in line or "lapack" in line or "mkl" in line) and "/" in line})
    except OSError:
        return []


def _per_tensor_sum(process_group, bucket):
    """DDP communication hook: sums each parameter's gradient on its own.

    DistributedDataParallel regroups parameters into buckets after its first
    iteration, and a ring all-reduce adds the ranks' values in an order that
    depends on an element's position in the buffer. Reducing each
    parameter's slice separately makes every element's order depend on its
    position in its own tensor only, so a resumed run (whose first iteration
    has the initial buckets) adds exactly as the uninterrupted one. Sums, not
    means: each rank's loss is already its share of the global mean.
    """
    buffer = bucket.buffer()
    futures = []
    offset = 0
    for parameter in bucket.parameters():
        n = parameter.numel()
        futures.append(dist.all_reduce(buffer.narrow(0, offset, n), group=process_group, async_op=True).get_future())
        offset += n
    return torch.futures.collect_all(futures).then(lambda _: buffer)


def _bucket_sum(process_group, bucket):
    """DDP communication hook for CUDA (NCCL): one sum per bucket (fast; its order is NCCL's)."""
    return dist.all_reduce(bucket.buffer(), group=process_group, async_op=True).get_future().then(lambda f: f.value()[0])


def _f64_bytes(tensor):
    """The values of a tensor as little-endian f64 bytes (numpy not needed)."""
    t = tensor.detach().to("cpu", torch.float64).contiguous()
    return ctypes.string_at(t.data_ptr(), t.numel() * 8)


class Server:
    def __init__(self, args, channel):
        self.rank = args.rank
        self.world = args.world_size
        self.channel = channel
        self.device_kind = args.device
        torch.set_num_threads(max(1, args.threads))
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        if args.device == "cuda":
            if not torch.cuda.is_available():
                raise EngineFailure("ENGINE_CUDA_UNAVAILABLE", "CUDA is not available to PyTorch %s on this machine (torch.cuda.is_available() is False)" % torch.__version__)
            torch.cuda.set_device(args.local_rank % torch.cuda.device_count())
            self.device = torch.device("cuda", torch.cuda.current_device())
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        else:
            self.device = torch.device("cpu")
        self.comm_device = self.device if args.device == "cuda" else torch.device("cpu")
        self.group = None
        if self.world > 1:
            backend = "nccl" if args.device == "cuda" else "gloo"
            os.environ.setdefault("MASTER_ADDR", args.master_addr)
            os.environ.setdefault("MASTER_PORT", str(args.master_port))
            try:
                dist.init_process_group(backend, init_method="env://", rank=self.rank, world_size=self.world, timeout=datetime.timedelta(seconds=args.timeout))
            except Exception as e:  # noqa: BLE001
                raise EngineFailure(
                    "ENGINE_RENDEZVOUS_FAILED",
                    "rank %d could not join the process group at %s:%s (world size %d): %s" % (self.rank, args.master_addr, args.master_port, self.world, e),
                ) from e
            self.group = dist.group.WORLD
        self.model = None
        self.ddp = None
        self.optimizer = None
        self.clip_norm = None
        self.operations = 0

    # -- commands in ----------------------------------------------------------------------------

    def _receive(self):
        """The next command on every rank: (header, payload tensor or None)."""
        if self.rank == 0:
            header, payload = self.channel.next_command()
            tensor = self._payload_tensor(header, payload)
        else:
            header, tensor = None, None
        if self.world > 1 and (self.rank != 0 or header["kind"] in ("init", "step", "evaluate", "stop")):
            box = [header]
            dist.broadcast_object_list(box, src=0, device=self.comm_device)
            header = box[0]
            count, dtype = self._payload_shape(header)
            if count > 0:
                if tensor is None:
                    tensor = torch.empty(count, dtype=dtype, device=self.comm_device)
                else:
                    tensor = tensor.to(self.comm_device)
                dist.broadcast(tensor, src=0)
        return header, tensor

    def _payload_shape(self, header):
        kind = header["kind"]
        if kind == "init":
            return self._parameter_count(header["decoder"]) * (3 if header["hasMoments"] else 1), torch.float64
        if kind in ("step", "evaluate"):
            return 2 * header["rows"] * header["columns"], torch.int32
        return 0, None

    @staticmethod
    def _parameter_count(decoder):
        return sum(math.prod(shape) for _, shape in parameter_shapes(decoder))

    def _payload_tensor(self, header, payload):
        count, dtype = self._payload_shape(header) if header["kind"] in ("init", "step", "evaluate", "stop") else (0, None)
        width = 8 if dtype == torch.float64 else 4
        if len(payload) != count * width:
            raise CommandError("ENGINE_BAD_COMMAND", "%s: payload of %d bytes, expected %d" % (header["kind"], len(payload), count * width))
        if count == 0:
            return None
        return torch.frombuffer(bytearray(payload), dtype=dtype)

    # -- the loop -------------------------------------------------------------------------------

    def run(self):
        while True:
            try:
                header, tensor = self._receive()
            except CommandError as e:
                self._answer_error(e)
                continue
            kind = header["kind"]
            try:
                if kind == "init":
                    reply = self._init(header, tensor)
                elif kind == "step":
                    reply = self._step(header, tensor)
                elif kind == "evaluate":
                    reply = self._evaluate(header, tensor)
                elif kind == "state":
                    reply = self._state()
                elif kind == "stop":
                    self._answer(({"kind": "stopped"}, b""))
                    if self.group is not None:
                        dist.destroy_process_group()
                    return
                else:
                    raise CommandError("ENGINE_BAD_COMMAND", "unknown command kind %r" % kind)
            except CommandError as e:
                self._answer_error(e)
                continue
            except NonFiniteError as e:
                self._answer_error(CommandError("ENGINE_NON_FINITE", str(e)))
                continue
            self.operations += 1
            if self.channel is not None:
                self.channel.operations = self.operations
            self._answer(reply)

    def _answer(self, reply):
        if self.rank == 0:
            header, payload = reply
            self.channel.reply(header, payload)

    def _answer_error(self, error):
        if self.rank == 0:
            self.channel.reply({"kind": "error", "code": error.code, "message": str(error)})

    # -- init -----------------------------------------------------------------------------------

    def _init(self, header, values):
        if header.get("protocol") != wire.PROTOCOL:
            raise EngineFailure("ENGINE_PROTOCOL", "the trainer speaks %r, this engine %r" % (header.get("protocol"), wire.PROTOCOL))
        if self.model is not None:
            raise CommandError("ENGINE_BAD_COMMAND", "init after init")
        dtype = DTYPES.get(header["dtype"])
        if dtype is None:
            raise CommandError("ENGINE_BAD_COMMAND", "dtype %r (f64 or f32)" % header["dtype"])
        if header.get("deterministic", True):
            torch.use_deterministic_algorithms(True)
        decoder = header["decoder"]
        count = self._parameter_count(decoder)
        values = values.to(self.device)
        flat = values[:count].to(dtype).clone()
        self.model = Decoder(decoder, flat)
        mask = torch.zeros(count, dtype=torch.bool, device=self.device)
        offset = 0
        groups = header["optimizer"]["groups"]
        for name, shape in parameter_shapes(decoder):
            n = math.prod(shape)
            if groups == "none" or not name.endswith(".gain"):
                mask[offset : offset + n] = True
            offset += n
        state = None
        if header["hasMoments"] or header["step"] > 0:
            if header["hasMoments"]:
                first = values[count : 2 * count].to(dtype).clone()
                second = values[2 * count : 3 * count].to(dtype).clone()
            else:
                first = torch.zeros(count, dtype=dtype, device=self.device)
                second = torch.zeros(count, dtype=dtype, device=self.device)
            state = (header["step"], header["beta1Power"], header["beta2Power"], first, second)
        self.optimizer = AdamW(count, header["optimizer"], mask, flat, state)
        self.clip_norm = header["optimizer"]["clipNorm"]
        if self.world > 1:
            hook = _bucket_sum if self.device_kind == "cuda" else _per_tensor_sum
            self.ddp = torch.nn.parallel.DistributedDataParallel(
                self.model,
                device_ids=[self.device.index] if self.device_kind == "cuda" else None,
                broadcast_buffers=False,
                process_group=self.group,
            )
            self.ddp.register_comm_hook(self.group, hook)
        ready = {
            "kind": "ready",
            "protocol": wire.PROTOCOL,
            "torch": torch.__version__,
            "device": torch.cuda.get_device_name(self.device) if self.device_kind == "cuda" else "cpu",
            "dtype": header["dtype"],
            "worldSize": self.world,
            "threads": torch.get_num_threads(),
            "parameters": count,
            "blas": _blas_libraries(),
        }
        return ready, b""

    def _require_model(self):
        if self.model is None:
            raise CommandError("ENGINE_BAD_COMMAND", "a command before init")

    # -- step and evaluate ----------------------------------------------------------------------

    def _rows(self, header, ids):
        rows, columns = header["rows"], header["columns"]
        n = rows * columns
        lo, hi = self.rank * rows // self.world, (self.rank + 1) * rows // self.world
        ids = ids.to(self.device).long()
        inputs = ids[:n].view(rows, columns)[lo:hi]
        targets = ids[n:].view(rows, columns)[lo:hi]
        return inputs, targets, n

    def _global_sum(self, local):
        total = local.detach().clone()
        if self.world > 1:
            dist.all_reduce(total, group=self.group)
        return float(total)

    def _step(self, header, ids):
        self._require_model()
        inputs, targets, n = self._rows(header, ids)
        model = self.ddp if self.ddp is not None else self.model
        parameters = list(self.model.parameters())
        try:
            local = model(inputs, targets)
            (local / n).backward()
            loss = self._global_sum(local) / n
            if not math.isfinite(loss):
                raise NonFiniteError("the loss of step %d is %r" % (self.optimizer.step + 1, loss))
            gradient = torch.cat([p.grad.reshape(-1) for p in parameters])
            if not bool(torch.isfinite(gradient).all()):
                raise NonFiniteError("a gradient of step %d is not finite" % (self.optimizer.step + 1))
            norm, multiplier = clip_multiplier(gradient, self.clip_norm)
            with torch.no_grad():
                self.optimizer.update(self.model.flat, gradient, header["learningRate"], multiplier)
        finally:
            for p in parameters:
                p.grad = None
        return {"kind": "stepped", "step": self.optimizer.step, "loss": loss, "gradientNorm": norm, "clipped": multiplier is not None}, b""

    def _evaluate(self, header, ids):
        self._require_model()
        inputs, targets, n = self._rows(header, ids)
        with torch.no_grad():
            local = self.model(inputs, targets)
        loss = self._global_sum(local) / n
        if not math.isfinite(loss):
            raise NonFiniteError("an evaluation loss is %r" % loss)
        return {"kind": "evaluated", "loss": loss}, b""

    # -- state ----------------------------------------------------------------------------------

    def _state(self):
        self._require_model()
        o = self.optimizer
        parts = [self.model.flat]
        has_moments = o.step > 0
        if has_moments:
            parts += [o.first, o.second]
        payload = b"".join(_f64_bytes(t) for t in parts)
        header = {"kind": "state", "step": o.step, "beta1Power": o.beta1_power, "beta2Power": o.beta2_power, "hasMoments": has_moments}
        return header, payload
