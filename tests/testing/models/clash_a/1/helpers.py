WHO = "clash_a"
