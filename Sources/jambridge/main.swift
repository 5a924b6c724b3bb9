print("jambridge")
