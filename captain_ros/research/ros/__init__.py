"""The research layer's ROS node: CoEvolve over the humanoid controller (``captain_coevolve``).

The only place outside ``captain_ros/ros/`` where rclpy is imported; it builds on the ros layer's
pieces (parameters, QoS, the humanoid client, the recorder watch).
"""
