"""python -m kernels_gpu.bench: see kernels_gpu.bench.run."""
import sys

from .run import main

sys.exit(main())
