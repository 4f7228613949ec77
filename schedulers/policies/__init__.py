"""schedulers/policies"""
