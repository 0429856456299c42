# Diagnostic (session 6): float32 "highest" gradients vs float64 over many seeds for the shape
# that failed once; prints each failing seed with its smallest min-vs-runner-up gap.
import sys
import torch
sys.path.insert(0, "tests")
from conftest import make_inputs, eager, reference, rel_err, cudnn_without_tf32
import fusedconv  # noqa

shape, dim = (1, 5, 33, 9, 36, 8, 2, 3, 2), 3
fails = 0
for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 60):
    x, w, b = make_inputs(shape, dtype=torch.float64, device="cuda", seed=seed)
    conv = torch.nn.functional.conv3d(x, w, b)
    two = conv.topk(2, dim=dim, largest=False).values
    gap = (two.narrow(dim, 1, 1) - two.narrow(dim, 0, 1)).min().item()
    torch.manual_seed(seed)
    gy = torch.randn(reference(x, w, b, dim).shape, device="cuda", dtype=torch.float64)
    def grads(fn, xx, ww, bb, g):
        leaves = [t.detach().clone().requires_grad_(True) for t in (xx, ww, bb)]
        with cudnn_without_tf32():
            y = fn(*leaves, dim)
            return torch.autograd.grad(y, leaves, g)
    ours = grads(lambda a, c, d, e: torch.ops.fusedconv.forward(a, c, d, e), x.float(), w.float(), b.float(), gy.float())
    exact = grads(eager, x, w, b, gy)
    errs = [rel_err(o, e) for o, e in zip(ours, exact)]
    bad = max(errs) > 1e-4
    fails += bad
    if bad or seed < 3:
        print(f"seed {seed}: gap {gap:.2e} errs " + " ".join(f"{e:.1e}" for e in errs) + (" FAIL" if bad else ""))
print(f"near-tie check: {fails} failing seeds")
