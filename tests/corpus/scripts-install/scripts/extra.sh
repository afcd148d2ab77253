pip install --no-cache-dir 'onnxruntime-gpu>=1.18'
