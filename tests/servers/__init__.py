"""Tests: the Thrift and Connect servers, their security, persistent catalogs and views (subprocess JVMs)."""
