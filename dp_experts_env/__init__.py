"""dp-experts-env: differentially private online learning with expert advice.

Importing the package registers every environment id with Gymnasium.
"""

__version__ = "0.1.0"
