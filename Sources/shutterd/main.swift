print("shutterd")
