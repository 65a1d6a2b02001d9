"""The logical layer analysis builds: relation schemas and SQL types, column scopes and
sources, concept hierarchies, E-Cube specs and the typed query.
"""
