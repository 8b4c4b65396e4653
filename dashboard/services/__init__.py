"""The dashboard's service layer: pure pandas over lake frames and snapshots, plus thin I/O
(:mod:`.sources` for the lake and snapshots, :mod:`.kafka_admin` for the Admin API, :mod:`.acks`
for acknowledgements). Nothing here imports Streamlit; pages never import confluent_kafka."""
