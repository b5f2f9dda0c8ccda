"""Drivers: small programs that make a client under test follow client mode's scenarios (the driver contract)."""
