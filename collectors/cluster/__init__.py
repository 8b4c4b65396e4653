"""Cluster metadata: brokers, controller, partition health (URP, offline, under min ISR)."""
