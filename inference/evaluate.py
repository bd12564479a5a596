"""`python -m inference.evaluate`: the world model's evaluation, as the issue and the docs name it.

The evaluation lives beside the simulator it judges by (`inference.training.evaluate`); this is
only its entry point, so both commands run the same thing."""

from inference.training.evaluate import main

if __name__ == "__main__":
    main()
