"""The world model judged against the reference simulator: one module per part of the table
(`inference.training.evaluate` runs them all and prints it)."""
