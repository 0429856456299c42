"""Autograd for torch.ops.fusedconv.forward (registered with torch.library.register_autograd).

PLACEHOLDER: filled in by the autograd work (issue 4).
"""
