print("up")
