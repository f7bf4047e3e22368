"""Primitives by family; each declares its shape rule's result, CPU and GPU implementations."""
