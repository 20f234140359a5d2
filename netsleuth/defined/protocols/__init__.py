"""Routing software for the DEFINED case studies, written against :mod:`netsleuth.defined.node`."""
