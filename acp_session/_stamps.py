V = False
