from kb.launch import main

main()
