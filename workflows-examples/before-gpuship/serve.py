"""A stand-in for the model server the image runs."""

print("serving")
