WHO = "clash_b"
