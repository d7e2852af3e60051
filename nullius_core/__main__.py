from nullius_core.cli.main import main

main()
