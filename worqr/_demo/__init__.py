"""_demo"""
