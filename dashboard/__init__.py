"""The kpulse web dashboard (Streamlit): ``app.py`` is the entry, ``app_pages/`` the pages,
``services/`` the data they show (no Streamlit there), ``launch.py`` the ``kpulse dashboard`` command."""
