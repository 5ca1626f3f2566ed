"""_clients"""
