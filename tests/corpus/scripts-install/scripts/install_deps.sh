#!/bin/sh
set -e
apt-get update
apt-get install -y --no-install-recommends libgl1
rm -rf /var/lib/apt/lists/*
pip install --no-cache-dir opencv-python-headless ultralytics==8.2.0
bash /opt/scripts/extra.sh
