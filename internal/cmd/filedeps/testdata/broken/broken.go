package broken

func f() int { return undefinedName }
