"""GPU sizing helpers: the batch-size arithmetic training scripts hand-write.

    from strata.gpu import max_batch_size
    bs = max_batch_size("80GiB", model_params=1_300_000_000, per_sample_memory="512MiB")

No GPU is needed: every input can be given; only total_memory=None asks
torch.cuda for the device's memory.
"""

from . import _strata

__all__ = ["OPTIMIZER_FACTORS", "batch_size_plan", "max_batch_size"]

# Optimizer state per parameter, in multiples of the weights' bytes:
# Adam/AdamW keep two moments; SGD with momentum one; plain SGD none;
# "adam_mixed" is mixed-precision Adam over 2-byte weights (an fp32 master
# copy and two fp32 moments: 12 bytes = 6 x 2).
OPTIMIZER_FACTORS = {"adam": 2, "adamw": 2, "momentum": 1, "sgd": 0, "adam_mixed": 6}


def _bytes(v, what):
    if isinstance(v, str):
        return _strata.parse_size(v)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ValueError(f"{what} must be a non-negative number of bytes or a size such as "
                         f"'24GiB', not {v!r}")
    return int(v)


def _device_total(device):
    try:
        import torch
    except ImportError:
        raise ValueError("total_memory=None needs torch with CUDA; pass the GPU's memory "
                         "(e.g. '80GiB')") from None
    if not torch.cuda.is_available():
        raise ValueError("total_memory=None: no CUDA device is visible; pass the GPU's memory")
    return torch.cuda.mem_get_info(device)[1]


def batch_size_plan(total_memory, model_params, per_sample_memory, bytes_per_param=4,
                    optimizer="adam", reserve=0.1, multiple=8, device=None):
    """The arithmetic of max_batch_size as a dict (all sizes in bytes):
    usable = total - reserve (reserve: a fraction of total below 1, or bytes /
    a size string), model_state = params x bytes_per_param x (1 weights + 1
    gradients + the optimizer's factor), batch = (usable - model_state) //
    per_sample, rounded down to a multiple of `multiple`.

    >>> p = batch_size_plan("80GiB", 1_300_000_000, "512MiB")
    >>> p["usable"], p["model_state"], p["per_sample"], p["fits"], p["batch_size"]
    (77309411328, 20800000000, 536870912, 105, 104)
    """
    total = _device_total(device) if total_memory is None else _bytes(total_memory,
                                                                      "total_memory")
    if isinstance(reserve, float) and 0 <= reserve < 1:
        reserve_b = int(total * reserve)
    else:
        reserve_b = _bytes(reserve, "reserve")
    if isinstance(optimizer, str):
        if optimizer not in OPTIMIZER_FACTORS:
            raise ValueError(f"optimizer {optimizer!r}: use one of {sorted(OPTIMIZER_FACTORS)} "
                             "or a number (optimizer state in multiples of the weights)")
        factor = OPTIMIZER_FACTORS[optimizer]
    else:
        factor = optimizer
    if factor < 0 or bytes_per_param <= 0 or model_params < 0:
        raise ValueError("model_params, bytes_per_param and the optimizer factor must be "
                         "positive")
    per_sample = _bytes(per_sample_memory, "per_sample_memory")
    if per_sample == 0:
        raise ValueError("per_sample_memory must be more than 0 bytes")
    if multiple < 1:
        raise ValueError("multiple must be at least 1")
    usable = total - reserve_b
    model_state = int(model_params * bytes_per_param * (2 + factor))
    free = usable - model_state
    fits = max(free, 0) // per_sample
    return {"total": total, "reserve": reserve_b, "usable": usable, "model_state": model_state,
            "free": free, "per_sample": per_sample, "fits": fits,
            "batch_size": fits // multiple * multiple}


def max_batch_size(total_memory, model_params, per_sample_memory, bytes_per_param=4,
                   optimizer="adam", reserve=0.1, multiple=8, device=None):
    """The largest batch that fits on one GPU, a multiple of `multiple` (8).

    total_memory: the GPU's memory (bytes or '80GiB'; None: ask torch.cuda
    for `device`); reserve: kept back for the CUDA context, allocator
    fragmentation and kernels' workspaces (a fraction of total, default 10%,
    or bytes); model_params: the parameter count; bytes_per_param: 4 (fp32)
    or 2 (fp16/bf16); optimizer: "adam"/"adamw" (2 states per weight),
    "momentum" (1), "sgd" (0), "adam_mixed" (6: fp32 master + moments over
    2-byte weights) or a number; per_sample_memory: activations (and inputs)
    of one sample, measured or estimated.

    A 1.3B-parameter fp32 model with Adam on an 80 GiB GPU, 512 MiB per sample:
    77,309,411,328 usable bytes - 20,800,000,000 for weights, gradients and
    the two moments leaves room for 105 samples, rounded down to 104:

    >>> max_batch_size("80GiB", model_params=1_300_000_000, per_sample_memory="512MiB")
    104

    350M parameters in mixed precision (2 bytes, adam_mixed: 16 bytes per
    parameter = 5.6 GB) on a 24 GiB GPU, 300 MiB per sample: 55 fit, so 48:

    >>> max_batch_size("24GiB", 350_000_000, "300MiB", bytes_per_param=2,
    ...                optimizer="adam_mixed")
    48

    When the model state alone does not fit, or fewer than `multiple`
    samples do, it raises ValueError with the numbers."""
    p = batch_size_plan(total_memory, model_params, per_sample_memory, bytes_per_param,
                        optimizer, reserve, multiple, device)
    if p["free"] <= 0:
        raise ValueError(f"the model state ({p['model_state']:,} bytes: weights, gradients and "
                         f"optimizer state) does not fit in the usable {p['usable']:,} bytes: "
                         "use fewer or smaller parameters, a lighter optimizer, or sharding")
    if p["batch_size"] == 0:
        raise ValueError(f"only {p['fits']} samples fit ({p['free']:,} bytes free, "
                         f"{p['per_sample']:,} per sample), fewer than a multiple of {multiple}: "
                         "lower per-sample memory (gradient checkpointing, shorter sequences)")
    return p["batch_size"]
