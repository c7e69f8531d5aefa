"""The feature store seam: Feast, run in its own virtual environment.

Feast 0.67 cannot share the platform's environment (it pins prometheus_client<0.25 and pandas<3), so
nothing here imports it: the modules run Feast's own command line and a small entry script with the Feast
venv's interpreter, and exchange Parquet and JSON files with them. ``environment`` finds (or builds) that
venv, ``repository`` writes a feature repository from a table, ``feast_cli`` runs ``feast apply`` /
``materialize``, ``training_set`` builds a point-in-time training set, ``online`` looks features up
through Feast's feature server.
"""
