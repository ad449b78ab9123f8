#!/usr/bin/env bash
# Set up kernel-judge on the GPU machine (the device tool's H100): wheels the image lacks
# (carried in .whl/), then an editable install without touching the image's torch.
# Usage: source scripts/on_device.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
mkdir -p /tmp/bin && printf '#!/bin/sh\nexec python3 -m cli "$@"\n' > /tmp/bin/judge && chmod +x /tmp/bin/judge
export PATH=/tmp/bin:$PATH
