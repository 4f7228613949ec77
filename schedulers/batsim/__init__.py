"""schedulers/batsim"""
