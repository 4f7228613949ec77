"""expe"""
