"""triton"""
