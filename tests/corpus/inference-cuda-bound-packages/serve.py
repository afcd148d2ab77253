import onnxruntime

print(onnxruntime.get_available_providers())
