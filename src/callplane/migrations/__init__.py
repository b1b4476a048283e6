"""Alembic migrations, shipped inside the package so ``callplane migrate`` works from a wheel."""
