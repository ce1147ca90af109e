"""Fault-injection experiments: scenario runners, workers, local service stand-ins and deciders."""
