print("serve")
