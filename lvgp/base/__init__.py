"""What every model and baseline of lvgp uses: argument checks, document encoding, splits,
numerics and the fitting loops. Nothing here imports from ``lvgp.kernels``, ``lvgp.models``,
``lvgp.baselines`` or ``lvgp.experiments``."""
