"""Sharded checkpoints for data-parallel / sharded training: every rank saves
its own state_dict (its shard) at the same time, each through its own
CheckpointManager; the checkpoint of a step exists once every rank's shard is
published and rank 0 has written the step's marker.

Why not torch.distributed.checkpoint: Debian's torch is 1.13.1, which has no
torch.distributed.checkpoint (it arrived in 2.0). Its predecessor,
torch.distributed._shard.checkpoint (StorageWriter / StorageReader), is there
but does not import on Debian's Python 3.11 (a dataclass with a mutable
default in torch.distributed._shard.sharded_tensor.metadata raises
ValueError). See docs/python.md, "Checkpoints of sharded training".

Layout in the store (PREFIX is the prefix given):
    PREFIX/rank-RRRRR/step-NNNNNNNNNNNN/{state.pt, MANIFEST.json}   one per rank
    PREFIX/step-NNNNNNNNNNNN.json   {"step", "world_size", "ranks": [manifest ETags]}
The marker is written last, so a step whose marker exists is complete.
"""

import json
import os
import re
import time

from . import CheckpointManager, NotFoundError, ObjectStore
from .data import _rank_world  # rank and world size: explicit, else torch.distributed's

_MARKER_RE = re.compile(r"step-(\d{12})\.json$")


def _dist():
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist
    except ImportError:
        pass
    return None


class ShardedCheckpoint:
    """Each rank's state_dict saved in parallel with the others'.

        ckpt = strata.ShardedCheckpoint("/nvme/ckpt", "s3://ckpt/run-7?endpoint=...")
        ckpt.save(step, {"model": model.state_dict(), "optim": opt.state_dict()})
        ckpt.commit()            # every rank: waits for its upload, then the marker
        state = ckpt.load()      # this rank's shard of the latest complete step

    rank / world_size: torch.distributed's when initialised (commit then uses
    its barrier), else as given (commit then polls the store for the other
    ranks' manifests, up to `timeout` seconds). save() returns once the shard
    is durable on local disk; the upload runs in the background."""

    def __init__(self, local_dir, remote, prefix="", rank=None, world_size=None, keep_local=2,
                 keep_remote=0, timeout=600.0):
        self.rank, self.world_size = _rank_world(rank, world_size)
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank {self.rank} is not in [0, {self.world_size})")
        self.store = ObjectStore(remote) if isinstance(remote, str) else remote
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        self.prefix = prefix
        self.local_dir = os.fspath(local_dir)
        self.keep_local, self.keep_remote = keep_local, keep_remote
        self.timeout = timeout
        self._managers = {}
        self._pending = []

    def _manager(self, rank):
        if rank not in self._managers:
            self._managers[rank] = CheckpointManager(
                os.path.join(self.local_dir, f"rank-{rank:05d}"), self.store,
                prefix=f"{self.prefix}rank-{rank:05d}/", keep_local=self.keep_local,
                keep_remote=self.keep_remote)
        return self._managers[rank]

    def _manifest(self, rank, step):
        return f"{self.prefix}rank-{rank:05d}/step-{step:012d}/MANIFEST.json"

    def _marker(self, step):
        return f"{self.prefix}step-{step:012d}.json"

    def save(self, step, state_dict, name="state.pt"):
        """This rank's shard of checkpoint `step` (torch.save of state_dict)."""
        self._manager(self.rank).save_state_dict(int(step), state_dict, name=name)
        self._pending.append(int(step))

    def commit(self):
        """Waits for this rank's uploads, then for every rank's; rank 0 then
        writes the marker of each step saved since the last commit."""
        self._manager(self.rank).wait()
        dist = _dist()
        steps, self._pending = self._pending, []
        if dist is not None:
            dist.barrier()
        else:
            deadline = time.monotonic() + self.timeout
            for step in steps:
                for r in range(self.world_size):
                    while not self.store.exists(self._manifest(r, step)):
                        if time.monotonic() > deadline:
                            raise TimeoutError(
                                f"rank {r} has not published step {step} after {self.timeout}s "
                                f"(its {self._manifest(r, step)} is missing); is it running "
                                f"with world_size={self.world_size}?")
                        time.sleep(0.05)
        if self.rank == 0:
            for step in steps:
                etags = [self.store.head(self._manifest(r, step)).etag
                         for r in range(self.world_size)]
                doc = {"step": step, "world_size": self.world_size, "ranks": etags}
                self.store.put(self._marker(step), json.dumps(doc).encode(),
                               content_type="application/json")
            self._drop_old_markers()
        if dist is not None:
            dist.barrier()

    def _drop_old_markers(self):
        if not self.keep_remote:
            return
        steps = self.steps()
        for step in steps[:-self.keep_remote]:
            self.store.delete(self._marker(step))

    def steps(self):
        """The complete steps (marker written), ascending."""
        out = []
        for info in self.store.list(self.prefix + "step-"):
            m = _MARKER_RE.search(info.key)
            if m and info.key[len(self.prefix):].count("/") == 0:
                out.append(int(m.group(1)))
        return sorted(out)

    def latest(self):
        steps = self.steps()
        return steps[-1] if steps else None

    def info(self, step="latest"):
        """The marker of a complete step: {"step", "world_size", "ranks"}."""
        if step == "latest":
            step = self.latest()
            if step is None:
                raise NotFoundError(f"no complete sharded checkpoint under {self.prefix!r}")
        try:
            return json.loads(self.store.get(self._marker(int(step))))
        except NotFoundError:
            raise NotFoundError(f"step {step} is not a complete sharded checkpoint under "
                                f"{self.prefix!r} (no marker {self._marker(int(step))}); "
                                f"complete steps: {self.steps()}") from None

    def load(self, step="latest", map_location=None, rank=None, name="state.pt"):
        """This rank's shard of `step` (or rank `rank`'s). A step saved by a
        different number of ranks raises ValueError unless rank is given:
        resharding a state_dict depends on the model; load_all() returns them all."""
        doc = self.info(step)
        if rank is None:
            if doc["world_size"] != self.world_size:
                raise ValueError(
                    f"step {doc['step']} was saved by {doc['world_size']} ranks and this run has "
                    f"{self.world_size}: load each shard with load(step, rank=r) or load_all() "
                    f"and reshard them for this world size")
            rank = self.rank
        if not 0 <= rank < doc["world_size"]:
            raise ValueError(f"rank {rank} is not in [0, {doc['world_size']}) for step "
                             f"{doc['step']}")
        return self._manager(rank).load_state_dict(doc["step"], map_location=map_location,
                                                   name=name)

    def load_all(self, step="latest", map_location=None, name="state.pt"):
        """Every rank's shard of `step`, in rank order."""
        doc = self.info(step)
        return [self.load(doc["step"], map_location, r, name) for r in range(doc["world_size"])]
